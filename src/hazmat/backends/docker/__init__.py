"""The Docker driver: containers made, checked and removed through the engine."""
