setClass("Shape", representation("VIRTUAL", name = "character"))
setClass("Circle", contains = "Shape", representation(r = "numeric"),
         validity = function(object) if (object@r < 0) "radius must be >= 0" else TRUE)
setClass("Rect", contains = "Shape", representation(w = "numeric", h = "numeric"))

setGeneric("area", function(shape) standardGeneric("area"))
setMethod("area", "Circle", function(shape) pi * shape@r^2)
setMethod("area", "Rect", function(shape) shape@w * shape@h)
setMethod("show", "Shape", function(object) {
  cat(class(object), object@name, "area", format(area(object), digits = 4), "\n")
})

shapes <- list(new("Circle", name = "c1", r = 2), new("Rect", name = "r1", w = 3, h = 4))
for (s in shapes) print(s)
res <- tryCatch(new("Circle", name = "bad", r = -1), error = function(e) conditionMessage(e))
print(res)
