"""Links with characters a number or a path cannot hold: a superscript digit as the run (`?run=¹`, a digit to
`str.isdigit` but not to `int`) and a NUL byte in the data set's path (`%00`). Each used to leave the page blank with a
traceback in the server's log; the page must be built and say in its notice what was refused, and the log stays
free of tracebacks. On the shared server, in Debian's Chromium."""
import pytest

from pagekit import TEXT, browser_page, poll

LINKS = [
    ("?run=%C2%B9", ["run='¹' refused: a stored run is named by its number"]),
    ("?data.dataset=csv:%2Ftmp%2Fa%00b.csv", ["data.dataset='csv:/tmp/a\\x00b.csv' refused", "a NUL byte"]),
    ("?run=%D9%A3&data.dataset=digits%00x",  # an Arabic-Indic three: a digit to `int` too, but no run's number
     ["run='٣' refused: a stored run is named by its number", "data.dataset='digits\\x00x' refused"]),
]


@pytest.mark.parametrize("query, said", LINKS, ids=[q for q, _ in LINKS])
def test_a_link_with_characters_no_value_holds_is_refused_in_words(served_home, query, said):
    url, folder = served_home
    log = folder / "server.log"
    before = log.stat().st_size
    with browser_page() as (page, errors):
        page.goto(url + query)
        def notice() -> str:
            return next((line for line in page.evaluate(TEXT).splitlines()
                         if "Some settings in the link were refused" in line), "")

        try:
            poll(lambda: all(part in notice() for part in said), timeout=120)  # the page was built and says it
        except AssertionError:
            raise AssertionError(f"the page's notice is {notice()!r}") from None
    with open(log, encoding="utf-8", errors="replace") as f:
        f.seek(before)
        added = f.read()
    assert "Traceback" not in added and "Error running application handler" not in added, added[-3000:]
