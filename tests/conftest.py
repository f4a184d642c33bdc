pytest_plugins = ["tests.fixtures.nodes", "tests.fixtures.postgres", "tests.fixtures.etcd"]
