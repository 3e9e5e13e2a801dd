"""Drop-in layers for code written against other sandbox libraries."""
