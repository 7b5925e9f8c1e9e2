"""Entry point for ``spark-submit``: the same ``flowbalance fleet`` command, with Spark's own --master.

    spark-submit --master spark://HOST:7077 $(python -c 'import flowbalance_cli.spark_entry as m; print(m.__file__)') \\
        testdata/fleet -o out/

The same exit codes (0 all planned, 1 a cluster failed, 2 unusable snapshot or options); spark-submit passes them
on. Its JVM starts before this script, so its start-up lines follow its own log4j setting: add
``--driver-java-options "-Dlog4j2.configurationFile=file:$(python -c 'import flowbalance.pipeline.session as s;
print(s.LOG_CONFIG)')"`` for errors only (see docs/fleet.md).
"""
import sys

from flowbalance_cli.app import main

if __name__ == "__main__":
    main(["fleet", *sys.argv[1:]])
