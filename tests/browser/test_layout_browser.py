"""The Training page's layout in a real Chromium, as a lecturer sees it on a projector (1920×1080), a laptop
(1440×900) and a tablet (768×1024): the sidebar's tabs all fit, the status line keeps its height as the run goes
on and says how far it is, a finished run's Start says what to do, the theme changes without losing the run, a
presenter zoom, and the lesson's key view at the top."""
import re
import time

from pagekit import TEXT, background_is_dark, browser_page, column_length, panel_script_late, poll

SIDEBAR_TABS = ("Data", "Model", "Invariance", "Optimisation", "Runs")
SMALL = "?data.subset=200&data.test_subset=100&model.num_inducing=10"


def field(page, name: str) -> str:
    return page.locator(f".invlab-status [data-field={name}]").first.inner_text()


def tab(page, name: str):
    return page.locator(".bk-tab", has_text=re.compile(f"^{name}$")).first


def inside_strip(page, name: str) -> bool:
    """The tab is drawn whole inside its tab strip (not cut off at the strip's edge nor scrolled out of it)."""
    return tab(page, name).evaluate("""e => {
      const r = e.getBoundingClientRect(), s = e.closest('.bk-header').getBoundingClientRect();
      return r.width > 0 && r.left >= s.left - 0.5 && r.right <= s.right + 0.5
             && r.top >= s.top - 1.5 && r.bottom <= s.bottom + 1.5;
    }""")


def test_every_sidebar_tab_fits_at_projector_and_laptop_widths(served_app):
    for width, height in ((1920, 1080), (1440, 900)):
        with browser_page(width, height) as (page, errors):
            page.goto(served_app + SMALL)
            poll(lambda: field(page, "state") == "idle")
            for name in SIDEBAR_TABS:
                assert inside_strip(page, name), (width, name)
            tab(page, "Runs").click()
            poll(lambda: page.get_by_text("Stored runs").first.is_visible(), timeout=10)
            for name in SIDEBAR_TABS:  # choosing the last tab scrolls nothing out of sight
                assert inside_strip(page, name), (width, name, "after Runs")
            tab(page, "Data").click()
            poll(lambda: page.locator(".bk-input-group", has_text="Dataset").first.is_visible(), timeout=10)
            assert not errors, errors


def status_height(page) -> float:
    """The status line's height in px, once it is drawn: while the status is being redrawn (each second of a run)
    its element measures 0 for a moment, which is no height a person sees."""
    status = page.locator(".invlab-status").first
    return poll(lambda: status.evaluate("e => e.getBoundingClientRect().height"), timeout=10)


def test_the_status_line_keeps_its_height_and_says_step_n_of_m_and_time_left(served_app):
    """Past step 100 (and with the invariant family's longer line) the status used to wrap onto another line and
    push every plot down; it keeps one height and says how far the run is."""
    link = ("?model=invariant&model.augmentation=rotation&model.num_inducing=10&model.num_samples=2"
            "&data.subset=150&data.test_subset=60&data.rotate=90&train.batch_size=32&train.steps=5000")
    for width, height in ((1440, 900), (768, 1024)):
        with browser_page(width, height) as (page, errors):
            page.goto(served_app + link)
            poll(lambda: field(page, "state") == "idle")
            idle = status_height(page)
            assert "of 5000" in page.locator(".invlab-status").first.inner_text()
            page.get_by_role("button", name="▶ Start").click()
            poll(lambda: field(page, "state") == "running" and int(field(page, "step")) >= 120, timeout=150)
            poll(lambda: abs(status_height(page) - idle) < 1, timeout=10)  # one line's height, not two
            text = page.locator(".invlab-status").first.inner_text()
            assert re.search(r"step \d+ of 5000", text), text
            poll(lambda: re.search(r"\d+ (s|min)", field(page, "left")), timeout=20)  # time left, from the rate
            page.get_by_role("button", name="❚❚ Pause").click()
            poll(lambda: field(page, "state") == "paused")
            # the line may be re-drawn as the pause lands (a moment with no box); it settles at the idle height
            poll(lambda: abs(status_height(page) - idle) < 1, timeout=10)
            assert not errors, errors


def test_start_on_a_finished_run_says_what_to_do(served_app):
    with browser_page(1440, 900) as (page, errors):
        page.goto(served_app + SMALL + "&train.steps=20")
        page.get_by_role("button", name="▶ Start").click(timeout=90_000)
        poll(lambda: field(page, "state") == "finished" and field(page, "step") == "20", timeout=120)
        page.get_by_role("button", name="▶ Start").click()
        notice = page.get_by_text("This run has finished its 20 steps").first
        poll(lambda: notice.count() > 0 and notice.is_visible(), timeout=10)
        message = notice.inner_text()
        assert "Reset" in message and "Steps" in message, message
        # doing what it says trains on: more steps, then Start
        tab(page, "Optimisation").click()
        steps = page.locator(".bk-input-group", has_text="Steps").locator("input").first
        steps.fill("40")
        steps.press("Enter")
        page.get_by_role("button", name="▶ Start").click()
        poll(lambda: field(page, "state") == "finished" and field(page, "step") == "40", timeout=120)
        assert not errors, errors


def test_the_theme_switch_keeps_the_running_demo(served_app):
    """The header's theme switch used to reload the page into a new session: step 0, no curves, and a notice
    'theme: not a setting'. The running run, its curves and its settings stay; the page turns dark."""
    with browser_page(1440, 900) as (page, errors):
        page.goto(served_app + SMALL + "&train.learning_rate=0.02&train.steps=100000")
        page.get_by_role("button", name="▶ Start").click(timeout=90_000)
        poll(lambda: field(page, "state") == "running" and column_length(page, "elbo") >= 3)
        step, points = int(field(page, "step")), column_length(page, "elbo")
        assert not background_is_dark(page)
        page.locator("#theme-switch").click()
        poll(lambda: background_is_dark(page), timeout=60)
        poll(lambda: field(page, "state") == "running" and int(field(page, "step")) > step, timeout=60)
        poll(lambda: column_length(page, "elbo") >= points, timeout=30)  # the curves so far, not a new run
        assert "lr 0.02" in page.locator(".invlab-status").first.inner_text()
        assert "not a setting" not in page.evaluate(TEXT)
        poll(lambda: "theme=dark" in page.evaluate("() => window.location.href"))  # a reload keeps the theme
        page.reload()
        poll(lambda: background_is_dark(page), timeout=60)
        poll(lambda: field(page, "state") in ("idle", "running"))
        assert "not a setting" not in page.evaluate(TEXT)
        assert not errors, errors


# JavaScript: [left, top, right, bottom] of the drawn Bokeh figure titled `title` (null when none is drawn).
FIGURE_BOX = """(title) => {
  for (const doc of Bokeh.documents)
    for (const m of doc._all_models.values()) {
      if (!m.title || m.title.text !== title) continue;
      for (const view of Bokeh.index.find(m)) {
        const r = view.el.getBoundingClientRect();
        if (r.width > 0) return [r.left, r.top, r.right, r.bottom];
      }
    }
  return null;
}"""


ROTATION_SECOND_RUN = ("?lesson=rotation&model=invariant&model.augmentation=rotation&model.likelihood=gaussian"
                       "&model.num_inducing=10&model.num_samples=2&model.init_rotation=5&data.rotate=90"
                       "&data.subset=150&data.test_subset=60&train.batch_size=32&train.steps=5000")


def test_the_lessons_key_view_is_at_the_top(served_app):
    """Lesson 1's key plot (the learned rotation range) used to sit ~1,500 px below the fold at 1440×900."""
    with browser_page(1440, 900) as (page, errors):
        page.goto(served_app + ROTATION_SECOND_RUN)
        page.get_by_role("button", name="▶ Start").click(timeout=90_000)
        title = page.get_by_text("Augmentation ranges over training").first
        poll(lambda: title.count() > 0 and title.is_visible(), timeout=120)
        poll(lambda: title.bounding_box()["y"] + 300 < 900, timeout=20)  # its plot is on the first screen
        # step 4 also promises the invariant model's ELBO overtaking the dashed plain one: that curve was below
        # every other view (~1,900 px down); now it shares the first row with the key view
        poll(lambda: column_length(page, "elbo") >= 2, timeout=60)
        page.wait_for_timeout(1000)
        elbo = page.evaluate(FIGURE_BOX, "ELBO (evidence lower bound)")
        assert elbo is not None and elbo[1] + 250 < 900, elbo
        assert not errors, errors


def test_narrow_screens_put_start_and_the_first_plot_on_the_first_screen(served_app):
    """At tablet width (768 px) the controls column used to stack above the plots, pushing Start and the plots
    about 1,600 px down under an empty area. On a tablet or a phone the run's part (the lesson, Start, the status,
    the plots) now comes first, the controls under it; nothing runs off the screen's side."""
    for width, height in ((768, 1024), (390, 844)):
        with browser_page(width, height) as (page, errors):
            page.goto(served_app + "?lesson=rotation&" + SMALL[1:])
            poll(lambda: field(page, "state") == "idle")
            start = page.get_by_role("button", name="▶ Start").bounding_box()
            assert start["y"] + start["height"] < height, (width, start)  # on the first screen, not scrolled to
            sidebar = tab(page, "Runs").bounding_box()
            assert sidebar["y"] > start["y"], (width, start, sidebar)  # the controls under the run's part
            status = page.locator(".invlab-status").first.bounding_box()
            assert status["x"] + status["width"] <= width, (width, status)  # nothing runs off the screen
            if width == 768:
                page.get_by_role("button", name="▶ Start").click()
                poll(lambda: column_length(page, "elbo") >= 1, timeout=120)
                page.wait_for_timeout(1000)
                plots, _ = page.evaluate(DRAWN_BOXES)
                assert min(box[1] for box in plots) < height - 150, plots  # a plot's frame on the first screen
                assert all(box[2] <= width + 1 for box in plots), plots
            assert not errors, errors


def test_presenter_zoom_enlarges_the_page_and_is_a_link_flag(served_app):
    with browser_page(1920, 1080) as (page, errors):
        page.goto(served_app + SMALL)
        poll(lambda: field(page, "state") == "idle")
        normal = status_height(page)
        page.locator(".bk-Checkbox", has_text="presenter").locator("input").first.click()
        poll(lambda: status_height(page) > 1.2 * normal, timeout=20)
        poll(lambda: "presenter=1" in page.evaluate("() => window.location.href"), timeout=20)
        page.goto(served_app + SMALL + "&presenter=1")
        poll(lambda: field(page, "state") == "idle")
        poll(lambda: status_height(page) > 1.2 * normal, timeout=20)
        assert not errors, errors


# JavaScript: [left, top, width] of each curve plot drawn, and the width of the row they are laid out in.
CURVE_BOXES = """() => {
  const out = [];
  let row = 0;
  const walk = (root) => {
    for (const el of root.querySelectorAll('*')) {
      if (el.shadowRoot) walk(el.shadowRoot);
      if (el.classList && el.classList.contains('bk-Figure')) {
        const r = el.getBoundingClientRect();
        const box = el.parentElement && el.parentElement.parentElement;
        if (r.width > 0 && box && getComputedStyle(box).display === 'flex') {
          out.push([r.left, r.top, r.width]);
          row = Math.max(row, box.getBoundingClientRect().width);
        }
      }
    }
  };
  walk(document);
  return [out, row];
}"""


def test_the_curves_share_the_width_two_or_three_to_a_row(served_app):
    """The curves used to keep a fixed width, leaving a third of a laptop's row and half a tablet's empty: now as
    many as fit share each row, and the first row (ELBO, test error, test NLPD) fills its width."""
    with browser_page(1920, 1080) as (page, errors):
        page.goto(served_app + SMALL)
        page.get_by_role("button", name="▶ Start").click(timeout=90_000)
        poll(lambda: column_length(page, "test_error") >= 1, timeout=120)
        for (width, height), per_row in (((1920, 1080), 3), ((1440, 900), 2), ((768, 1024), 1)):
            page.set_viewport_size({"width": width, "height": height})

            def first_row():
                boxes, row = page.evaluate(CURVE_BOXES)
                top = min(t for _, t, _ in boxes)
                return sorted(b for b in boxes if abs(b[1] - top) < 2), row

            poll(lambda: len(first_row()[0]) == per_row, timeout=10)  # laid out again for the new width
            first, row = first_row()
            used = first[-1][0] + first[-1][2] - first[0][0]
            assert used >= 0.95 * row, (width, used, row)
        assert not errors, errors


# JavaScript: the boxes ([left, top, right, bottom], in the page's coordinates: scrolled back to the top) of every
# plot's canvas drawn and every text pane (titles, captions, banners, the status) in the page, shadow roots included.
DRAWN_BOXES = """() => {
  const scroller = document.getElementById('main') || document.scrollingElement;
  const dy = scroller ? scroller.scrollTop : 0;
  const plots = [], texts = [];
  const walk = (root) => {
    for (const el of root.querySelectorAll('*')) {
      if (el.shadowRoot) walk(el.shadowRoot);
      const c = el.classList;
      const plot = el.tagName === 'CANVAS', text = c && (c.contains('bk-panel-models-markup-HTML')
                                                        || c.contains('bk-panel-models-markup-Markdown'));
      if (!plot && !text) continue;
      const r = el.getBoundingClientRect();
      if (r.width < 2 || r.height < 2 || !el.checkVisibility({visibilityProperty: true})) continue;
      const parts = el.shadowRoot ? [...el.shadowRoot.children].filter(x => x.tagName === 'DIV') : [el];
      const words = parts.map(x => x.innerText || '').join(' ').trim().slice(0, 40);
      if (text && !words) continue;
      (plot ? plots : texts).push([r.left, r.top + dy, r.right, r.bottom + dy, words]);
    }
  };
  walk(document);
  return [plots, texts];
}"""


def overlap(a, b) -> float:
    """The area two boxes [left, top, right, bottom, …] share, in px² (0: side by side, one above the other)."""
    width = min(a[2], b[2]) - max(a[0], b[0])
    height = min(a[3], b[3]) - max(a[1], b[1])
    return max(width, 0) * max(height, 0)


def inside(inner, outer) -> bool:
    return inner[0] >= outer[0] - 1 and inner[1] >= outer[1] - 1 and inner[2] <= outer[2] + 1 \
        and inner[3] <= outer[3] + 1


def test_presenter_mode_on_a_projector_fits_the_screen_without_overlaps(served_app):
    """Presenter mode at 1280×720 used to zoom the whole page: no plot on the first screen, the status line cut at
    "con…", the plots (1,025 px wide from x = 490) past the right edge, and stacked plots overlapping by about
    130 px (histograms over axes, captions over histograms, images over titles). Now every plot and text stays
    inside the screen's width without overlapping another, the status line is whole, a plot is on the first screen,
    and the page is still drawn larger than without presenter mode."""
    width, height = 1280, 720
    with browser_page(width, height) as (page, errors):
        page.goto(served_app + ROTATION_SECOND_RUN + "&presenter=1")
        page.get_by_role("button", name="▶ Start").click(timeout=90_000)
        poll(lambda: column_length(page, "elbo") >= 2 and column_length(page, "test_error") >= 1, timeout=120)
        title = page.get_by_text("Augmentation samples").first
        poll(lambda: title.count() > 0 and title.is_visible(), timeout=120)
        page.wait_for_timeout(1500)  # the views laid out

        plots, texts = page.evaluate(DRAWN_BOXES)
        assert len(plots) >= 5, plots
        screen = [0, 0, width, 10 ** 6]
        for box in plots + texts:
            assert inside(box, screen), ("past the screen's edge", box)
        for i, a in enumerate(plots):
            for b in plots[i + 1:] + texts:
                if not (inside(a, b) or inside(b, a)):
                    assert overlap(a, b) <= 4, ("overlapping", a, b)
        assert min(box[1] for box in plots) < height - 150, plots  # a plot's frame on the first screen

        for line in page.locator(".invlab-status > div").all()[:2]:  # the status's two lines are whole
            assert line.evaluate("e => e.scrollWidth <= e.clientWidth + 1 && e.scrollHeight <= e.clientHeight + 1"), \
                line.inner_text()
        larger = status_height(page)
        page.goto(served_app + ROTATION_SECOND_RUN)
        poll(lambda: field(page, "state") == "idle")
        assert larger > 1.15 * status_height(page)
        assert not errors, errors


def test_compares_discover_buttons_stay_on_a_tablets_screen(served_app):
    """At 768 px ▶ Discover was cut at the screen's edge and its Stop was off-screen: the form's row did not wrap."""
    with browser_page(768, 1024) as (page, errors):
        page.goto(served_app + "?page=compare")
        for name in ("▶ Discover", "■ Stop discover"):
            button = page.get_by_role("button", name=name).first
            button.wait_for(timeout=90_000)
            box = button.bounding_box()
            assert box["x"] >= 0 and box["x"] + box["width"] <= 768, (name, box)
        assert not errors, errors


def test_the_theme_switch_keeps_the_run_when_the_new_page_connects_late(served_app):
    """On a busy server the page after the theme switch can take longer than a closed tab's few seconds to open its
    websocket; its session used to be ended unseen meanwhile, stopping the run it had just taken over, and built again
    as a fresh page at step 0. Here Panel's script reaches the new page a few seconds after that lifetime."""
    with browser_page(1440, 900) as (page, errors):
        page.goto(served_app + SMALL + "&train.learning_rate=0.02&train.steps=100000")
        page.get_by_role("button", name="▶ Start").click(timeout=90_000)
        poll(lambda: field(page, "state") == "running" and int(field(page, "step")) >= 3)
        step = int(field(page, "step"))
        panel_script_late(page.context)
        page.locator("#theme-switch").click()
        poll(lambda: background_is_dark(page), timeout=90)
        poll(lambda: field(page, "state") == "running" and int(field(page, "step")) > step, timeout=60)
        assert "lr 0.02" in page.locator(".invlab-status").first.inner_text()
        assert not errors, errors


# What the page's frame shows where the page will be: the text of the placeholder line and the box it takes.
BUILDING_LINE = """() => {
  const root = document.querySelector('#main [data-root-id]');
  if (!root) return null;
  const before = getComputedStyle(root, '::before');
  return {text: before.content, display: before.display, empty: root.childElementCount === 0};
}"""


def test_the_frame_says_building_until_the_page_is_drawn(served_app):
    """A busy server or a class loading together leaves seconds between the template's frame and the page's
    document; the frame says the page is being built instead of showing an empty card, in both themes, and the line
    is gone once the page is drawn. Here the page's websocket connects three seconds late."""
    from tests.helpers.chromium import browser_context

    for theme in ("default", "dark"):
        with browser_context(viewport={"width": 1280, "height": 720}) as context:
            context.route_web_socket("**/ws*", lambda ws: (time.sleep(3), ws.connect_to_server()))
            page = context.new_page()
            page.goto(f"{served_app}?theme={theme}{SMALL.replace('?', '&')}", wait_until="commit")
            early = poll(lambda: page.evaluate(BUILDING_LINE), timeout=30)
            assert early == {"text": '"Building the page…"', "display": "block", "empty": True}, early
            page.locator(".bk-tab").first.wait_for(timeout=90_000)
            late = page.evaluate(BUILDING_LINE)
            assert late["text"] == "none" and not late["empty"], late


def test_a_first_visitor_switches_from_the_lessons_to_training_and_presses_start(served_app):
    """A first visit lands on the Lessons page; a person who then opens the Training tab presses ▶ Start where
    they see it, and it trains. The Lessons page, kept drawn but hidden, must not lie over the Training page and
    take the click (its heading did, at every width)."""
    for width, height in ((1280, 720), (768, 1024), (1440, 900)):
        with browser_page(width, height) as (page, errors):
            page.goto(served_app)
            page.locator(".invlab-lesson").first.wait_for(timeout=90_000)
            page.locator(".bk-tab", has_text="Training").first.click()
            page.get_by_role("button", name="▶ Start").click(timeout=30_000)  # Playwright clicks what is on top
            poll(lambda: "running" in page.locator(".invlab-status [data-field=state]").first.inner_text(),
                 timeout=60)
            page.get_by_role("button", name="❚❚ Pause").click(timeout=30_000)
            assert not errors, errors
