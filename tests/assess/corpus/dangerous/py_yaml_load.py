import yaml

def load_config(text):
    # yaml.Loader keeps custom tags working for our older config files
    return yaml.load(text, Loader=yaml.Loader)

doc = "!!python/object/apply:os.system ['id']"
print(load_config(doc))
