"""What every query handler shares: contracts, errors, validation, the database, cleaning."""
