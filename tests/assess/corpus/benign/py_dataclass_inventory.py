from dataclasses import dataclass, field


@dataclass
class Item:
    name: str
    quantity: int
    tags: list[str] = field(default_factory=list)


@dataclass
class Inventory:
    items: dict[str, Item] = field(default_factory=dict)

    def add(self, item: Item) -> None:
        existing = self.items.get(item.name)
        if existing:
            existing.quantity += item.quantity
        else:
            self.items[item.name] = item

    def low_stock(self, threshold: int = 3) -> list[str]:
        return sorted(n for n, i in self.items.items() if i.quantity < threshold)


inv = Inventory()
inv.add(Item("bolts", 10))
inv.add(Item("nuts", 2))
inv.add(Item("bolts", 5))
print(inv.items["bolts"].quantity, inv.low_stock())
