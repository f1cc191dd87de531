ｅｖａｌ("__import__('os').getcwd()")
