enum State { Idle, Running, Done }
function next(s: State): State {
  switch (s) {
    case State.Idle: return State.Running;
    case State.Running: return State.Done;
    default: return s;
  }
}
let s = State.Idle;
while (s !== State.Done) { console.log(State[s]); s = next(s); }
