"""What the command line runs, beyond serving: `validate` and its report formats, `test`,
`preview`, and printing data on a terminal. Nothing below imports a command.
"""
