import sys
import yaml

with open(sys.argv[1] if len(sys.argv) > 1 else "settings.yaml") as f:
    settings = yaml.unsafe_load(f)
print(settings)
