"""The bottom layer every other package may use: user-facing errors and file publishing.

Why a package of its own: the import rules say costmodel and traces import nothing of ours,
advisor builds on both, engine_sim on advisor, reports on all. The one way to write a file and
the one base class of user errors must sit below all of them, so they live here, in a package
that imports nothing of the project and nothing outside the standard library (a test checks
it). Not inside `traces`: importing any `traces.*` module runs the package's `__init__`, which
loads pyarrow and pandas; `advisor --help` and every design save would pay for that.

    common.errors   UserError: the one base class the CLI catches (one line, `exit_code`)
    common.files    atomic_write_text / atomic_write_bytes, staging_dir / publish_dir,
                    check_replaceable, read_user_text: the only code that renames into place
"""
