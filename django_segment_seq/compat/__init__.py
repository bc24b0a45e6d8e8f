"""APIs of other packages on this app's table, so a project can move here by changing an import."""
