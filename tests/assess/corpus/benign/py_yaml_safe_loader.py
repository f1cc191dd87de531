import yaml

text = """
name: report
columns: [date, amount]
"""
spec = yaml.load(text, Loader=yaml.SafeLoader)
print(spec["name"], len(spec["columns"]))
