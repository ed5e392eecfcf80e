"""The page's settings: `RunSettings`, its one source of truth (`settings`), each family's starting values on the page
(`defaults`), and how a parameter is shown from its param object alone (`field_kinds`)."""
from invlab.dashboard.state.defaults import FAMILY_DATASETS, FAMILY_DEFAULTS, page_run_config
from invlab.dashboard.state.settings import RunSettings, family_defaults

__all__ = ["FAMILY_DATASETS", "FAMILY_DEFAULTS", "RunSettings", "family_defaults", "page_run_config"]
