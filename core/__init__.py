"""The ground floor: what every family and the workflow share; imports no family and no Dask."""
