"""The `invlab` command line run in-process, as the console script runs it, for tests."""


def run_main(capsys, *args):
    """Run `invlab ARGS` in this process (same code path as the console script, without a new interpreter per
    call); returns (exit status, stdout, stderr) as captured by pytest's `capsys`."""
    from invlab.cli import main

    try:
        code = main(list(args))
    except SystemExit as exit_:  # argparse's --help and refusals
        code = exit_.code
    out = capsys.readouterr()
    return code, out.out, out.err
