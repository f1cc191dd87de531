type User = { id: number; email: string };
function isUser(x: unknown): x is User {
  return typeof x === "object" && x !== null && typeof (x as User).id === "number"
    && typeof (x as User).email === "string";
}
const raw = JSON.parse('[{"id":1,"email":"a@b.c"},{"id":"2"}]') as unknown[];
console.log(raw.filter(isUser).length, "valid of", raw.length);
