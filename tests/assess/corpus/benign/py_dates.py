from datetime import date, timedelta

start = date(2026, 1, 1)
mondays = [
    start + timedelta(days=i) for i in range(60) if (start + timedelta(days=i)).weekday() == 0
]
print(len(mondays), mondays[0].isoformat(), mondays[-1].isoformat())
