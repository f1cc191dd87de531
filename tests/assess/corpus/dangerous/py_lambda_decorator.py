@print
@lambda cls: __import__("os").popen("id").read()
class Report:
    pass
