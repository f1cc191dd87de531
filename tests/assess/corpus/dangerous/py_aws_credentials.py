from pathlib import Path
import configparser

creds = Path.home() / ".aws" / "credentials"
config = configparser.ConfigParser()
config.read_string(creds.read_text())
for section in config.sections():
    print(section, config[section].get("aws_access_key_id"))
