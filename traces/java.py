"""Find Java and check its version before Spark starts, so a missing or old Java is one
clear line instead of a JVM stack trace."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from traces.errors import JavaError

INSTALL_HINT = "install it, e.g. `apt-get install openjdk-17-jre-headless`, and put it on PATH or set JAVA_HOME"


def required_java() -> int:
    """PySpark 4 runs on Java 17 or newer; PySpark 3 on Java 8 or newer."""
    try:
        from importlib.metadata import version

        major = int(version("pyspark").split(".")[0])
    except Exception:  # noqa: BLE001 - no metadata: assume the current major line
        major = 4
    return 17 if major >= 4 else 8


def find_java() -> Path | None:
    home = os.environ.get("JAVA_HOME")
    if home:
        candidate = Path(home) / "bin" / "java"
        return candidate if candidate.is_file() else None
    found = shutil.which("java")
    return Path(found) if found else None


def parse_java_major(version_text: str) -> int | None:
    """'openjdk version "17.0.15" ...' -> 17; 'java version "1.8.0_292"' -> 8."""
    match = re.search(r'version "(\d+)(?:\.(\d+))?', version_text)
    if not match:
        return None
    major = int(match.group(1))
    if major == 1 and match.group(2):
        major = int(match.group(2))
    return major


def check_java(needed: int | None = None) -> str:
    """Return 'Java N at PATH'; raise JavaError (one line: found, needed, how to fix)."""
    needed = needed or required_java()
    java = find_java()
    if java is None:
        where = f"JAVA_HOME={os.environ['JAVA_HOME']} has no bin/java" if os.environ.get(
            "JAVA_HOME") else "no java on PATH and JAVA_HOME is not set"
        raise JavaError(f"Java not found ({where}); PySpark needs Java {needed} or newer: "
                        f"{INSTALL_HINT}")
    try:
        proc = subprocess.run([str(java), "-version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise JavaError(f"cannot run {java} -version ({exc}); PySpark needs Java {needed} or "
                        f"newer: {INSTALL_HINT}") from None
    major = parse_java_major(proc.stderr + proc.stdout)
    if major is None:
        raise JavaError(f"{java} -version did not report a version; PySpark needs Java "
                        f"{needed} or newer: {INSTALL_HINT}")
    if major < needed:
        raise JavaError(f"found Java {major} at {java}; PySpark needs Java {needed} or newer: "
                        f"{INSTALL_HINT}")
    return f"Java {major} at {java}"
