"""A built figure out of Python: the page payload and data files, static SVG/PNG images, their caches and the figure cache."""
