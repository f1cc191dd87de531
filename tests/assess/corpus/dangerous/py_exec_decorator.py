@exec
@input
def payload():
    pass
