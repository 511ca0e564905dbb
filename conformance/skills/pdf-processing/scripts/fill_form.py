"""Fills a PDF form from a JSON file of field values (a fixture: prints what it would do)."""
import json
import sys

fields = json.load(open(sys.argv[1]))
for name, value in fields.items():
    print(f"{name} = {value}")
