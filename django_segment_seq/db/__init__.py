"""The SQL underneath: every statement per database vendor, bounded lock waits on a shared connection,
SQLite's single writer and the choice of database."""
