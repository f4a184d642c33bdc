"""The Spark settings analytics starts with (pure)."""

from __future__ import annotations

from spark.session import is_local, session_conf

JARS = ["/usr/share/java/sqlite-jdbc.jar", "/usr/share/java/postgresql.jar"]


def test_local_sessions_use_jars_from_disk_and_bind_to_loopback():
    conf = session_conf("local[*]", JARS)
    assert conf["spark.jars"] == ",".join(JARS)
    assert "spark.jars.packages" not in conf  # would download from Maven Central
    assert conf["spark.driver.bindAddress"] == conf["spark.driver.host"] == "127.0.0.1"
    assert conf["spark.ui.enabled"] == "false"
    assert int(conf["spark.sql.shuffle.partitions"]) >= 2


def test_a_cluster_master_is_not_bound_to_loopback():
    conf = session_conf("spark://spark-master.example:7077", JARS)
    assert conf["spark.master"] == "spark://spark-master.example:7077"
    assert "spark.driver.bindAddress" not in conf and "spark.driver.host" not in conf
    # Not Spark's 200: each of the report's small shuffles would be 200 tasks on the cluster.
    assert conf["spark.sql.shuffle.partitions"] == "16"
    assert session_conf("spark://h:7077", JARS, {"spark.sql.shuffle.partitions": "400"})[
        "spark.sql.shuffle.partitions"] == "400"


def test_the_users_settings_win():
    conf = session_conf("local[2]", JARS, {"spark.sql.shuffle.partitions": "16", "spark.driver.memory": "4g"})
    assert conf["spark.sql.shuffle.partitions"] == "16" and conf["spark.driver.memory"] == "4g"


def test_local_masters():
    assert is_local("local") and is_local("local[4]") and is_local("local[*]") and is_local("local-cluster[2,1,1024]")
    assert not is_local("spark://h:7077") and not is_local("yarn")
