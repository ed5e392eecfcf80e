"""Controls in a real Chromium: a refused value is explained beside its field and the field shows the value in use;
scales sit on log sliders (the kernel variance's 1 near the middle, not at the far left); small values are shown
as they are (ε = 0.001, not 0)."""
import re
import time

from pagekit import browser_page, poll


def open_tab(page, url: str, tab: str) -> None:
    page.goto(url)
    tabs = page.locator(".bk-tab")
    poll(lambda: tabs.filter(has_text=tab).count() > 0)
    training = tabs.filter(has_text=re.compile(r"^\s*Training\s*$"))
    if training.count() and training.first.is_visible():  # a landing page in front of the lab
        training.first.click()
    tabs.filter(has_text=tab).first.click(timeout=90_000)


def group(page, label: str):
    """The input group whose label starts with `label` (so "Subset" is not "Test subset")."""
    return page.locator(".bk-input-group", has_text=re.compile(r"^\s*" + re.escape(label))).first


def field(page, label: str):
    return group(page, label).locator("input").first


def message_below(page, label: str, box):
    """The visible message naming `label` that sits just under the field `box` (within 60 px), or None."""
    for message in page.locator(".invlab-field-message", has_text=label).all():
        if not message.is_visible():
            continue
        m, b = message.bounding_box(), box.bounding_box()
        if m and b and 0 <= m["y"] - (b["y"] + b["height"]) < 60 and m["x"] < b["x"] + b["width"]:
            return message.inner_text()
    return None


def refuse(page, label: str, typed: str) -> str:
    """Type `typed` into the field and press Enter; wait for the message beside it; the field shows the value in use."""
    box = field(page, label)
    in_use = box.input_value()
    box.fill(typed)
    box.press("Enter")
    text = poll(lambda: message_below(page, label, box), timeout=15)
    poll(lambda: box.input_value() == in_use, timeout=10)
    return text


def test_refused_values_are_explained_beside_the_field(served_app):
    with browser_page() as (page, errors):
        open_tab(page, served_app + "?model=svgp", "Data")
        assert "whole numbers" in refuse(page, "Classes", "abc")
        assert "≥ 0" in refuse(page, "Subset", "-5")

        page.locator(".bk-tab", has_text="Optimisation").first.click()
        lr_in_status = page.locator("[data-field=lr]").first
        old_rate = poll(lambda: lr_in_status.inner_text().strip())
        assert "10" in refuse(page, "Learning rate", "1e6")  # names the allowed interval
        assert "1e-06" in refuse(page, "Learning rate", "-1")
        time.sleep(2.0)  # no silent flip later: the field and the status keep the rate in use
        assert lr_in_status.inner_text().strip() == old_rate
        assert field(page, "Learning rate").input_value() == old_rate
        # an accepted value clears the message and reaches the status at once
        box = field(page, "Learning rate")
        box.fill("0.02")
        box.press("Enter")
        poll(lambda: lr_in_status.inner_text().strip() == "0.02", timeout=15)
        poll(lambda: message_below(page, "Learning rate", box) is None, timeout=10)
        assert not errors, errors


def slider_share(page, label: str) -> float:
    """Where the handle of the slider belonging to field `label` sits, as a share of the slider's width."""
    g = group(page, label)
    inside = g.locator(".noUi-target")
    if inside.count():  # a slider with its own title
        target = inside.first
    else:  # a number box with its slider beside it, in the same row
        gb = g.bounding_box()
        targets = [t for t in page.locator(".noUi-target").all() if t.is_visible()]
        near = [t for t in targets if gb["y"] <= t.bounding_box()["y"] + t.bounding_box()["height"] / 2
                <= gb["y"] + gb["height"] + 10]
        assert near, f"no slider beside {label}"
        target = near[0]
    t, h = target.bounding_box(), target.locator(".noUi-handle").first.bounding_box()
    return (h["x"] + h["width"] / 2 - t["x"]) / t["width"]


def test_scales_sit_on_log_sliders_and_small_values_are_shown(served_app):
    with browser_page() as (page, errors):
        open_tab(page, served_app + "?model=svgp&train.learning_rate=0.002", "Model")
        poll(lambda: group(page, "Variance").count() > 0)
        share = slider_share(page, "Variance")  # 1 on 1e-6..1e4: 60 % along a log slider, 0.01 % on a linear one
        assert 0.45 < share < 0.75, share
        box = field(page, "Variance")
        poll(lambda: box.count() > 0 and box.input_value() == "1", timeout=10)
        box.fill("100")  # an exact value typed: the slider follows
        box.press("Enter")
        poll(lambda: 0.75 < slider_share(page, "Variance") < 0.85, timeout=15)
        epsilon = field(page, "Epsilon")
        poll(lambda: epsilon.count() > 0 and epsilon.input_value() == "0.001", timeout=10)
        # a link's value reaches its widget: the learning rate's box and its log slider (0.002 on 1e-6..10: 47 %)
        page.locator(".bk-tab", has_text="Optimisation").first.click()
        poll(lambda: field(page, "Learning rate").input_value() == "0.002", timeout=10)
        assert 0.42 < slider_share(page, "Learning rate") < 0.52
        assert not errors, errors


def test_a_learned_rotation_range_is_set_on_zero_to_180_degrees(served_app):
    """The running model's rotation half-width: labelled with its unit, a slider over 0..180° (5° near the left end,
    not in the middle of a −180..180 slider), and a box that takes an exact value."""
    # ranges not learned: the slider shows the initial 5° however fast the run trains
    query = ("?model=invariant&model.augmentation=rotation&model.num_inducing=10&model.num_samples=4"
             "&model.learn_ranges=false&data.subset=150&data.test_subset=60&train.batch_size=32&train.steps=100000")
    with browser_page() as (page, errors):
        open_tab(page, served_app + query, "Invariance")
        page.get_by_role("button", name="▶ Start").click(timeout=90_000)
        label = "rotation half-width (°)"
        poll(lambda: group(page, label).count() > 0 and group(page, label).is_visible())
        assert slider_share(page, label) < 0.1
        learn = page.locator(".bk-Checkbox", has_text="learn (untick to freeze)").locator("input").first
        assert not learn.is_checked()  # the link froze the ranges, and the control says so
        box = field(page, label)
        box.fill("90")
        box.press("Enter")
        poll(lambda: 0.45 < slider_share(page, label) < 0.55, timeout=20)
        time.sleep(3.0)  # several ticks later the model's value, shown back, is still the one set
        assert box.input_value() == "90" and 0.45 < slider_share(page, label) < 0.55
        assert not errors, errors
