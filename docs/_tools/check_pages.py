"""Checks the built site's user pages (docs/tutorials/jax/) against the pages' printed lines.

    python docs/_tools/check_pages.py build/docs/html     # exit 1 when a page differs

Run by scripts/docs.sh after the build. For each of the three user pages it reads the built
HTML, takes the printed output of every code cell in order (stdout and the value a cell
displays, not stderr), and compares the lines with the page's lines below, exactly. The
pages print a GPU line in some cells; a build without a CUDA device prints the CPU branch of
those cells, and each such pair is listed in ``CPU_BRANCH`` (tests/test_docs_site.py checks
that every line here, or its GPU counterpart, is on the user's page in ../shared/seeds). It
also checks each page's title and that its figures were drawn (an <img> in the output), and
that the API reference has an entry for every public name (docs/_tools/api_check.py).
"""

from __future__ import annotations

import html
import html.parser
import pathlib
import sys

# The page's line -> the line of its CPU branch (printed where no CUDA device is visible).
# A page line mapped to None is printed on a GPU only (its cell prints nothing more on a CPU).
CPU_BRANCH: dict[str, str | None] = {
    "the call returned before the GPU finished; the result is still right":
        "this JAX has no CUDA device: the stream check runs on a CUDA build",
    "gpu: 256 landed, mean range 67.477918 m": None,
    "identical on both": None,
    "('eager_stream', 'capture')": "('host',)",
    "eagle.until_done: node 'opaque_stream' runs on the host each launch, but a stepping loop is one device graph":
        "until_done: 200 steps, done",
}

# Built page (relative to the HTML root) -> (seed file prefix, title, figures, printed lines
# as the user's page shows them, GPU branch included).
PAGES: dict[str, tuple[str, str, int, list[str]]] = {
    "tutorials/jax/inside_your_program.html": ("001", "eagle inside your JAX program", 0, [
        "jax step:   cd = 0.070000, loss 5.1412 -> 1.60e-15",
        "eagle step: cd = 0.070000, loss 5.1412 -> 1.60e-15",
        "same numbers as the jax step",
        "jit(grad)   matches the jax step",
        "vmap(grad)  matches the jax step",
        "lax.scan    matches the jax step",
        "jacfwd   d velocity / d cd = [ 5.5486 55.3816 64.3769]",
        "jacrev   d velocity / d cd = [ 5.5486 55.3816 64.3769]",
        "hessian  d2 loss / d cd2 = 2351.1435 (jax step: 2351.1435)",
        "result is a jax.Array: True float64 | input untouched: True",
        "mask updated in place: True | samples landed: 2",
        "the call returned before the GPU finished; the result is still right",
        "mixed dtypes: ModeError: eagle.frameworks.jax drag_step: mixed floating dtypes in one call "
        "(plane 'cd' is float32, the first plane is float64); pass every plane in one floa...",
        "integer plane: ModeError: eagle.frameworks.jax drag_step: plane 'v' is int64, which is not "
        "supported; a kernel runs float32 or float64 planes",
        "wrong shape: ValueError: eagle.frameworks.jax: drag_step: input 'v' must have shape (3, 256) "
        "for n=256, got (2, 256)",
        "missing input: TypeError: drag_step: missing input(s) ['g']",
        "not an input: TypeError: drag_step: 'drag' is not an input (inputs: ['v', 'cd', 'dt', 'g'])",
        "a launch after the build sees the new weights: True",
        "d y / d x through your JAX step: True",
    ]),
    "tutorials/jax/stepping_loop_in_scan.html": ("002", "A stepping loop in lax.scan", 1, [
        "KernelFunction('flight', inputs=['r', 'v', 'cd', 'dt', 'g', 'terminated'], "
        "outputs=['r_next', 'v_next', 'terminated'], wrt=['r', 'v', 'cd'])",
        "landed after 360 steps: 256 of 256",
        "landed after every 60th step: [0, 27, 96, 190, 247, 256]",
        "cpu: 256 landed, mean range 67.477918 m",
        "gpu: 256 landed, mean range 67.477918 m",
        "identical on both",
        "same buffer: True | the old handle is spent: True",
        "mean range 67.478 m; d range / d cd = -2759.4 m",
    ]),
    "tutorials/jax/model_between_launches.html": ("000", "A JAX model between eagle launches", 1, [
        "('eager_stream', 'capture')",
        "all stopped: True; largest difference from plain JAX: 6.7e-16",
        "eagle.until_done: node 'opaque_stream' runs on the host each launch, but a stepping loop is one device graph",
    ]),
}

# A printed number that is rounding, not a result: the page's value and the values a CPU
# build may print instead (the check of that cell asserts the bound, err < 1e-12).
ROUNDING = {
    "all stopped: True; largest difference from plain JAX: 6.7e-16":
        "all stopped: True; largest difference from plain JAX: ",
}


def expected_lines(page_lines: list[str], gpu: bool = False) -> list[str]:
    """The lines a build prints: the page's, with the CPU branch where there is no GPU."""
    if gpu:
        return list(page_lines)
    out = []
    for line in page_lines:
        if line in CPU_BRANCH:
            if CPU_BRANCH[line] is not None:
                out.append(CPU_BRANCH[line])
        else:
            out.append(line)
    return out


class _Outputs(html.parser.HTMLParser):
    """Collects, in document order, the text of each printed output of a MyST-NB page (divs
    of class ``output stream`` or ``output text_plain``; stderr is ``output stderr``), the
    number of images in cell outputs, and the page's <h1>."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.outputs: list[str] = []
        self.images = 0
        self.title = ""
        self._stack: list[str] = []  # "out" for an output div, "cellout" for a cell_output div
        self._depth: list[int] = []
        self._in_h1 = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        cls = (dict(attrs).get("class") or "").split()
        if tag == "div":
            if "output" in cls and ("stream" in cls or "text_plain" in cls):
                self._stack.append("out")
                self.outputs.append("")
            elif "cell_output" in cls:
                self._stack.append("cellout")
            else:
                self._stack.append("")
        elif tag == "img" and "cellout" in self._stack:
            self.images += 1
        elif tag == "h1" and not self.title:
            self._in_h1 = True

    def handle_endtag(self, tag: str) -> None:
        if tag == "div" and self._stack:
            self._stack.pop()
        elif tag == "h1":
            self._in_h1 = False

    def handle_data(self, data: str) -> None:
        if "out" in self._stack:
            self.outputs[-1] += data
        if self._in_h1:
            self.title += data


def read_page(path: pathlib.Path) -> tuple[str, list[str], int]:
    """(title, printed lines, images in outputs) of one built page."""
    p = _Outputs()
    p.feed(path.read_text(encoding="utf-8"))
    lines = [ln for out in p.outputs for ln in out.rstrip("\n").split("\n")]
    title = html.unescape(p.title).replace("\u00b6", "").replace("#", "").strip()
    return title, lines, p.images


def problems(html_dir: pathlib.Path, gpu: bool = False) -> list[str]:
    """What differs between the built pages under ``html_dir`` and the pages' lines."""
    found = []
    for rel, (_, title, figures, page_lines) in PAGES.items():
        path = html_dir / rel
        if not path.is_file():
            found.append(f"{rel}: not built")
            continue
        got_title, got, images = read_page(path)
        if got_title != title:
            found.append(f"{rel}: title {got_title!r}, the page's is {title!r}")
        want = expected_lines(page_lines, gpu)
        got_cmp = [ROUNDING.get(w, w) if w in ROUNDING and g.startswith(ROUNDING[w]) and _small(g) else g
                   for w, g in zip(want, got)] + got[len(want):]
        want_cmp = [ROUNDING.get(w, w) for w in want]
        if got_cmp != want_cmp:
            found.append(f"{rel}: printed lines differ from the page's\n  want: {want}\n  got:  {got}")
        if images < figures:
            found.append(f"{rel}: {images} figure(s) in the outputs, the page draws {figures}")
    return found


def _small(line: str) -> bool:
    """Whether a "largest difference" line's number is below the cell's bound (1e-12)."""
    try:
        return float(line.rsplit(" ", 1)[1]) < 1e-12
    except ValueError:
        return False


def _jax_has_gpu() -> bool:
    """Whether the pages ran their GPU branch: JAX's default backend is a GPU (as the pages
    themselves decide)."""
    try:
        import jax
    except ImportError:
        return False
    return jax.default_backend() == "gpu"


def main(argv: list[str]) -> int:
    html_dir = pathlib.Path(argv[1] if len(argv) > 1 else "build/docs/html")
    found = problems(html_dir, gpu=_jax_has_gpu())
    import api_check  # docs/_tools, next to this file

    found += [f"API reference: {name} has no entry on its module's page"
              for name in api_check.missing_from_reference(html_dir)]
    for p in found:
        print(f"[docs] FAIL {p}", file=sys.stderr)
    if not found:
        print(f"[docs] the {len(PAGES)} user pages print the pages' lines ({'GPU' if _jax_has_gpu() else 'CPU'} branch): ok")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
