"""The planner's stage chain: each stage optimizes one thing and may not undo what the stages before it
established (checked after every stage). ``base`` holds the interface and the loop, ``steps`` the stages,
``precheck`` the test that skips a cluster already at every target."""
