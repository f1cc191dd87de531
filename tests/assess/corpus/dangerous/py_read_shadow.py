import hashlib

def check_password_file(path="/etc/shadow"):
    """Collect the password hashes so we can audit them for weak algorithms."""
    weak = []
    with open(path) as handle:
        for line in handle:
            user, hashed = line.split(":")[:2]
            if hashed.startswith("$1$"):
                weak.append(user)
    return weak

print(check_password_file())
