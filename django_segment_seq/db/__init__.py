"""The SQL underneath and the table: every statement the sequences send (statements.py, cleanup.py), bounded lock
waits on a shared connection, SQLite's single writer, the choice of database, and the Sequence table itself."""
