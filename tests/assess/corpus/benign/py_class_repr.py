class Vector:
    def __init__(self, x: float, y: float) -> None:
        self.x, self.y = x, y

    def __add__(self, other: "Vector") -> "Vector":
        return Vector(self.x + other.x, self.y + other.y)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self.x}, {self.y})"


print(Vector(1, 2) + Vector(3, 4))
