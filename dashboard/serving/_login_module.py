"""The module `invlab serve --basic-auth` names to Bokeh's `--auth-module`: the login check, form and logout of
`logins.LoginsProvider` (Bokeh reads these five names from the module it loads)."""
from invlab.dashboard.serving.logins import provider_from_env

_provider = provider_from_env()

get_user = _provider.get_user
login_url = _provider.login_url
LoginHandler = _provider.login_handler
logout_url = _provider.logout_url
LogoutHandler = _provider.logout_handler
