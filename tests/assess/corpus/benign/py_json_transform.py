import json

orders = json.loads(
    '[{"id": 1, "items": [{"sku": "a", "qty": 2, "price": 3.5}]},'
    ' {"id": 2, "items": [{"sku": "b", "qty": 1, "price": 10}]}]'
)
summary = {
    order["id"]: round(sum(i["qty"] * i["price"] for i in order["items"]), 2) for order in orders
}
print(json.dumps(summary, indent=2, sort_keys=True))
