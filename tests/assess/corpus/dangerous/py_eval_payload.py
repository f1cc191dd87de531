import base64

payload = base64.b64decode("cHJpbnQoJ2hpJyk=").decode()
eval(compile(payload, "<x>", "exec"))
