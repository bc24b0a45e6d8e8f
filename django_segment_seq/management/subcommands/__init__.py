"""The subcommands of `manage.py segment_seq`, one module each; the command itself only dispatches.

Adding one is a module here with a subclass of base.Subcommand (its name, help, arguments and work) and its
dotted path in SUBCOMMANDS of management/commands/segment_seq.py; Django's own options and `--database`
come with it.
"""
