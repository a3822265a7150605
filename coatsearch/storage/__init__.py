"""A study on disk: the store, the run record, the journal and its repair, the trial lock, trial checks, file
safety, names and folders, the plan file and the planned trials with the stored space record.
"""
