"""What the figure scripts of `snsim study`, `snsim compare` and timelines share: one-line input errors (exit 2),
reading a JSON file, the command line, and matplotlib imported only once the input is known good (exit 3 without
it). Imported by plot_study.py, plot_compare.py, plot_timeline.py and plot_validation.py, which Python finds beside them."""

import argparse
import json
import math
import sys


def fail(message, code=2):
    print(message, file=sys.stderr)
    sys.exit(code)


def is_number(value):
    """A finite number; JSON true is no number, though Python's bool is an int."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def load_json(path):
    """The parsed file, or exit 2 with one line naming it (and the line and column of malformed JSON)."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        fail(f"{path}: cannot open the file: {e.strerror}")
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        fail(f"{path}:{e.lineno}:{e.colno}: malformed JSON: {e.msg}")


def parse_args(doc, what, help_text, default_out, extra=None):
    """--out IMAGE and --quiet after one input file; `extra(parser)` adds more options."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(what, help=help_text)
    parser.add_argument("--out", default=default_out, help="the image to write (png or svg, by its extension)")
    parser.add_argument("--quiet", action="store_true", help="print nothing but errors")
    if extra:
        extra(parser)
    return parser.parse_args()


def draw_with_pyplot(script, draw, out, quiet):
    """Imports matplotlib (exit 3 without it), calls draw(plt), says what it wrote unless quiet."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        fail(f"{script} needs matplotlib (Debian: apt install python3-matplotlib)", code=3)
    draw(plt)
    if not quiet:
        print(f"wrote {out}")


def save(plt, fig, path):
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
