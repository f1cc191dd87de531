def gen():
    yield 1


g = gen()
frame = g.gi_frame.f_back
while frame is not None:
    print(frame.f_globals.keys())
    frame = frame.f_back
