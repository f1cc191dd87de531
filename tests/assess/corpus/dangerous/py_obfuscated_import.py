name = chr(111) + chr(115)
mod = __import__(name)
getattr(mod, "sys" + "tem")("id")
