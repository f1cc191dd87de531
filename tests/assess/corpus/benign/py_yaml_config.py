import yaml

DEFAULTS = {"workers": 2, "retries": 3}

def load_settings(path="settings.yaml"):
    try:
        with open(path) as f:
            loaded = yaml.safe_load(f) or {}
    except FileNotFoundError:
        loaded = {}
    return {**DEFAULTS, **loaded}

print(load_settings())
