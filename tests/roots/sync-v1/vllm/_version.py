__version__ = version = '0.1.0'
__version_tuple__ = version_tuple = (0, 1, 0)
__commit_id__ = commit_id = 'g1111111aa'
