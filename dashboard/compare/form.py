"""The Compare page's launch form: what a sweep may vary, launching a sweep or a built-in study, stopping and
resuming it, and opening a stored sweep.

Mixed into `ComparePage` (page.py), which holds the widgets and the page's state.
"""
from __future__ import annotations

import param

from invlab.dashboard.compare.data import _fmt_value, _parse_token, _spread
from invlab.dashboard.compare.runner import SweepRunner
from invlab.dashboard.safe_text import markdown_text
from invlab.dashboard.state.settings import coerce
from invlab.errors import InvlabError
from invlab.sweeps import SweepSpec, study
from invlab.sweeps.discover_report import is_discover
from invlab.train.states import RunStatus, StudyState


class SweepForm:
    """Mixed into `ComparePage`: the launch form and launching, stopping, resuming and opening sweeps (see the
    module's doc)."""

    def parameter_options(self) -> dict[str, str]:
        """The settings a sweep can vary: the family, then every data / model / training setting of the current
        configuration (labelled with its value now); the seed is varied by "Seeds per value"."""
        options = {f"model family (now {self.settings.model})": "model"}
        for section in ("model", "data", "train"):
            obj = self.settings.section(section)
            for name in obj.param:
                if name == "name" or (section == "train" and name == "seed"):
                    continue
                value = getattr(obj, name)
                options[f"{section}.{name} (now {_fmt_value(value)})"] = f"{section}.{name}"
        return options

    def refresh_parameters(self) -> None:
        """Follow the Training page's family and values (the Compare tab shows them when it is opened)."""
        current = self.parameter.value
        options = self.parameter_options()
        self.parameter.options = options
        if current in options.values():
            self.parameter.value = current

    def _suggest_values(self, dotted: str | None) -> None:
        """A placeholder that says what the chosen setting accepts."""
        p = self._parameter_object(dotted)
        objects = getattr(p, "objects", None) if p is not None else None
        if dotted == "model":
            from invlab.models import model_names

            objects = model_names()
        if objects:
            self.values.placeholder = "e.g. " + ", ".join(_fmt_value(o) for o in list(objects)[:4])
        elif isinstance(p, param.Boolean):
            self.values.placeholder = "true, false"
        elif p is not None and getattr(p, "bounds", None):
            lo, hi = p.bounds
            self.values.placeholder = f"numbers in [{_fmt_value(lo)}, {_fmt_value(hi)}], e.g. " + \
                ", ".join(_fmt_value(v) for v in _spread(lo, hi, getattr(p, "default", None)))
        else:
            self.values.placeholder = "comma-separated values"

    def _parameter_object(self, dotted: str | None):
        if not dotted or "." not in dotted:
            return None
        section, _, name = dotted.partition(".")
        obj = self.settings.section(section)
        return obj.param[name] if name in obj.param else None

    def refresh_sweeps(self) -> None:
        """Re-read the stored sweeps (those this page's user may see) into the sweep selector; a store error shows as
        the message."""
        if self.store is None or not hasattr(self.store, "list_sweeps"):
            return
        try:
            sweeps = self.store.list_sweeps()
        except InvlabError as err:
            self.message = str(err)
            return
        options = {}
        for s in sweeps:
            name = getattr(s, "name", "") or "sweep"
            status = getattr(s, "status", "")
            options[f"#{s.id} {name}" + (f" — {status}" if status else "")] = s.id
        self.sweeps_select.options = options
        if options and self.sweeps_select.value not in options.values():
            shown = self.sweep_id if self.sweep_id in options.values() else next(iter(options.values()))
            self.sweeps_select.value = shown

    # -- launching -----------------------------------------------------------------------------------------------------
    def spec_from_settings(self, dotted: str | None = None, values: str | list | None = None,
                           seeds: int | None = None) -> SweepSpec:
        """The sweep the form describes: the Training page's configuration with `dotted` set to each of `values`
        (text as typed, comma-separated), times `seeds` seeds. Raises InvlabError naming what is wrong."""
        dotted = dotted if dotted is not None else self.parameter.value
        values = values if values is not None else self.values.value
        seeds = int(seeds if seeds is not None else self.seeds.value)
        if not dotted:
            raise InvlabError("choose the setting to vary")
        if isinstance(values, str):
            tokens = [t.strip() for t in values.replace(";", ",").split(",") if t.strip()]
            if not tokens:
                raise InvlabError(f"{dotted}: enter the values to try, separated by commas (e.g. 0, 45, 90)")
            p = self._parameter_object(dotted)
            parsed = []
            for token in tokens:
                value = _parse_token(token)
                parsed.append(coerce(p, value, dotted) if p is not None else value)
            values = parsed
        if seeds < 1:
            raise InvlabError("seeds per value: at least 1")
        base = self.settings.run_config()
        first_seed = int(self.settings.train.seed or 0)
        name = f"{dotted} over {len(values)} values × {seeds} seeds"
        spec = SweepSpec(name=name, base=base, vary={dotted: list(values)}, mode="grid",
                         seeds=list(range(first_seed, first_seed + seeds)))
        spec.validate()
        return spec

    def launch_from_settings(self) -> None:
        """Start a sweep varying the form's setting over its values and seeds on the Training page's configuration; a
        bad form shows its message under the form."""
        try:
            spec = self.spec_from_settings()
        except (InvlabError, ValueError, TypeError) as err:
            self._form_error(str(err))
            return
        self.launch(spec)

    def launch_study(self, name: str, quick: bool = True) -> None:
        """Start the built-in study `name` (`quick`: its short form); an unknown or invalid one shows its message under
        the form."""
        try:
            spec = study(name, quick=quick)
            spec.validate()
        except (InvlabError, KeyError, ValueError) as err:
            self._form_error(str(err))
            return
        self.launch(spec)

    def launch(self, spec: SweepSpec, sweep_id: int | None = None) -> None:
        """Run `spec` (or resume sweep `sweep_id`) on a background thread; the page follows it."""
        if self.store is None:
            self._form_error("this page has no run store to keep the sweep's runs in")
            return
        if self.runner is not None and not self.runner.finished:
            self._form_error("a sweep is running: stop it first (■ Stop), or wait for it to finish")
            return
        if self.discover.running():
            self._form_error("the Discover study is running: ■ Stop discover first, or wait for it to finish")
            return
        self._form_error("")
        try:
            planned = spec.runs()
        except InvlabError as err:
            self._form_error(str(err))
            return
        self._reset_view(planned, list(spec.vary))
        self.param.update(sweep_id=sweep_id, state=StudyState.STARTING,
                          message=f"starting Dask workers for {len(planned)} runs…")
        self.runner = SweepRunner(spec, self.store, sweep_id=sweep_id, scheduler=self.scheduler or None,
                                  n_workers=self.n_workers or None, shared=self.shared_cluster).start()
        self.stop_button.disabled = False
        self.resume_button.visible = False
        self._start_ticking()

    def resume(self, sweep_id: int | None = None) -> None:
        """Run the missing runs of stored sweep `sweep_id` (default: the one shown), on the page."""
        sweep_id = self.sweep_id if sweep_id is None else int(sweep_id)
        if sweep_id is None or self.store is None:
            self._form_error("open a stored sweep first")
            return
        try:
            spec = SweepSpec.from_json(self.store.get_sweep(sweep_id).spec)
        except InvlabError as err:
            self._form_error(str(err))
            return
        self.launch(spec, sweep_id=sweep_id)

    def stop(self) -> None:
        """Stop the running sweep: runs in progress are abandoned, finished runs stay stored and Resume
        runs the rest."""
        if self.runner is not None and not self.runner.finished:
            self.runner.stop()
            self.state = StudyState.STOPPING
            self.message = "stopping: runs in progress are abandoned; finished runs stay stored"

    def _form_error(self, text: str) -> None:
        self.form_error_text = text
        self.form_error.object = markdown_text(text)
        self.form_error.visible = bool(text)

    # -- opening a stored sweep ----------------------------------------------------------------------------------------
    def open_sweep(self, sweep_id: int) -> None:
        """Show stored sweep `sweep_id` (a running sweep on this page keeps running in the background)."""
        if self.store is None:
            self._form_error("this page has no run store")
            return
        try:
            record = self.store.get_sweep(int(sweep_id))
        except InvlabError as err:
            self._form_error(str(err))
            return
        if self.runner is not None and self.runner.sweep_id == int(sweep_id) and not self.runner.finished:
            return  # already following it live
        self._form_error("")
        try:
            self._reset_view(SweepSpec.from_json(record.spec).runs(), [])
        except InvlabError:  # a specification this version no longer accepts: show what is stored
            self._reset_view([], [])
        self.runner = None
        for plan in self._planned:  # until the store has them, the sweep's runs are runs it has not run
            self._live[plan.key] = {"status": "not run", "step": 0, "history": ([], [])}
        stored = sum(r.status == RunStatus.FINISHED for r in self.store.sweep_runs(record.id))
        complete = stored >= (record.total or 0)
        self.param.update(sweep_id=int(sweep_id), state=StudyState.FINISHED if complete else StudyState.STOPPED,
                          message=self._record_text(record) + ("" if complete else "; ▶ Resume runs the rest"))
        self.resume_button.visible = not complete
        if int(sweep_id) in self.sweeps_select.options.values():
            self.sweeps_select.value = int(sweep_id)
        self.stop_button.disabled = True
        self.refresh()
        try:
            discover = is_discover(SweepSpec.from_json(record.spec))
        except InvlabError:
            discover = False
        if discover and self.discover.show(int(sweep_id)):
            self.discover_changed()  # its ranking shows in the Discover study too

    def _record_text(self, record) -> str:
        stored = sum(r.status == RunStatus.FINISHED for r in self.store.sweep_runs(record.id))
        total = getattr(record, "total", 0) or stored
        return f"{record.name or 'sweep'}: {stored} of {total} runs stored"

    def _reset_view(self, planned: list, axes: list[str]) -> None:
        self._planned = list(planned)
        self.axes = list(axes)
        self._live, self._histories = {}, {}
        self._stored_done = -1
        self.cmp = None
        self.not_comparable.visible = False
        self._show_table()
        self._show_plots()
