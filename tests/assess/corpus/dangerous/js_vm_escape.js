const vm = require("vm");
const result = vm.runInNewContext('this.constructor.constructor("return process")()');
console.log(result.pid);
