"""The system checks of SequenceField, one id per problem and one module per concern: the sequence name, the
format, the reset and gapless options, the scope, and what a format adds to its texts (check digits, concealment)."""
