"""Entry point for ``spark-submit``: the same ``flowbalance fleet`` command, with Spark's own --master.

    spark-submit --master spark://HOST:7077 $(python -c 'import flowbalance_cli.spark_entry as m; print(m.__file__)') \\
        testdata/fleet -o out/
"""
import sys

from flowbalance_cli.app import main

if __name__ == "__main__":
    main(["fleet", *sys.argv[1:]])
