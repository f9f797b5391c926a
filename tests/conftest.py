"""Test-wide configuration: markers shared by the suites."""


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "snarkjs: needs node/npm and the circom/snarkjs fixtures built by scripts/fixtures.sh "
        "(deselect with -m 'not snarkjs')",
    )
