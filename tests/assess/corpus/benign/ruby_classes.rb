class Account
  attr_reader :balance

  def initialize(balance = 0)
    @balance = balance
  end

  def deposit(amount)
    raise ArgumentError, 'negative' if amount.negative?
    @balance += amount
    self
  end
end

acct = Account.new.deposit(50).deposit(25)
puts acct.balance
