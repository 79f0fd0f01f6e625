"""sparse_tutorial: the companion library of the executable book on sparse attention."""
from sparse_tutorial.profiles import default_device, profile, seed_everything

__version__ = "0.1.0"
