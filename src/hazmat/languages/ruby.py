"""Ruby: a runner kept warm with the container."""

from types import MappingProxyType

from hazmat.languages import IMAGE_VERSION, ImageSpec, Language, SelfTest

LANGUAGE = Language(
    name="ruby",
    image=f"hazmat/ruby:{IMAGE_VERSION}",
    source_name="main.rb",
    extensions=(".rb",),
    run="exec ruby main.rb",
    runner="ruby",
    entry="main.rb",
    aliases=("rb",),
    version="puts RUBY_VERSION\n",
    hello="puts 1",
    rank=9,
    analysers=("ruby",),
    names=MappingProxyType(
        {
            "polygon": ("ruby",),
            "sandbox_fusion": ("ruby",),
            "piston": ("ruby", "rb", "ruby3"),
            "judge0": ("72",),
        }
    ),
    images=(ImageSpec("ruby", ("ruby",), "Ruby and its standard library"),),
    self_test=SelfTest(
        greet='puts "hello #{$stdin.gets.strip}"\n',
        streams='puts "out"\n$stderr.puts "err"\nexit 3\n',
    ),
    title="Ruby",
    out_of_memory=("NoMemoryError", "failed to allocate memory"),
)
