"""What a call answers: a spec compiled into a tool, and the result it builds."""
